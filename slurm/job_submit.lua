--[[
Berth's job_submit plugin for a Slurm cluster with bridged pools (docs/slurm.md, What Slurm enforces).

A job that asks for GPUs in a partition of Berth's bridged nodes must run in a reservation: a
Berth booking's `berth-<id>` (Slurm lets only the booking's account in), a maintenance window's,
or one an admin made by hand (Berth holds those as blocked time). Any other GPU job is refused at
submission with a message that says how to run it. Copy this file beside slurm.conf as
job_submit.lua, set `JobSubmitPlugins=lua`, and list the bridged partitions below.
]]

-- The partitions whose nodes Berth books; DEFAULT: whether a job that names none lands in one.
BRIDGED = { berth = true }
DEFAULT = true

local function asks_for_gpus(job_desc)
  for _, field in ipairs({ "tres_per_node", "tres_per_job", "tres_per_socket", "tres_per_task", "gres" }) do
    local value = job_desc[field]
    if value ~= nil and string.find(value, "gpu", 1, true) then
      return true
    end
  end
  return false
end

local function bridged(partition)
  if partition == nil then
    return DEFAULT
  end
  for name in string.gmatch(partition, "[^,]+") do
    if BRIDGED[name] then
      return true
    end
  end
  return false
end

function slurm_job_submit(job_desc, part_list, submit_uid)
  if not bridged(job_desc.partition) or not asks_for_gpus(job_desc) then
    return slurm.SUCCESS
  end
  if job_desc.reservation ~= nil and job_desc.reservation ~= "" then
    return slurm.SUCCESS
  end
  slurm.log_user("GPUs here are booked in Berth: book them there, then submit with --reservation=berth-<id> of your booking")
  return slurm.ESLURM_ACCESS_DENIED
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  if job_desc.reservation == "" and bridged(job_rec.partition) and asks_for_gpus(job_rec) then
    slurm.log_user("a GPU job here stays in a reservation")
    return slurm.ESLURM_ACCESS_DENIED
  end
  return slurm.SUCCESS
end

return slurm.SUCCESS
