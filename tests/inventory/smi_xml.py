"""Build one-GPU `nvidia-smi -q -x` texts, shaped as nvidia-smi prints them, for the inventory tests."""

import uuid as uuids


def gpu_uuid() -> str:
    return f"GPU-{uuids.uuid4()}"


def smi_xml(
    product: str = "NVIDIA H100 80GB HBM3",
    total: str = "81559 MiB",
    *,
    uuid: str | None = None,
    mig: str | None = "Disabled",
    architecture: str | None = None,
    used: str = "0 MiB",
    util: str = "0 %",
    processes: str = "",
) -> str:
    """Return a `-q -x` text of one GPU; `mig` None leaves `<mig_mode>` out, as drivers before R450 do."""
    mig_mode = (
        f"<mig_mode><current_mig>{mig}</current_mig><pending_mig>{mig}</pending_mig></mig_mode>"
        if mig is not None
        else ""
    )
    arch = f"<product_architecture>{architecture}</product_architecture>" if architecture else ""
    return f"""<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">
<nvidia_smi_log>
	<driver_version>550.54.15</driver_version>
	<attached_gpus>1</attached_gpus>
	<gpu id="00000000:18:00.0">
		<product_name>{product}</product_name>
		{arch}
		{mig_mode}
		<uuid>{uuid or gpu_uuid()}</uuid>
		<pci><pci_bus_id>00000000:18:00.0</pci_bus_id></pci>
		<fb_memory_usage>
			<total>{total}</total>
			<used>{used}</used>
		</fb_memory_usage>
		<utilization><gpu_util>{util}</gpu_util></utilization>
		<processes>{processes}</processes>
	</gpu>
</nvidia_smi_log>
"""


def process(pid: str = "4242", used_memory: str = "1024 MiB", name: str = "python") -> str:
    """Return one `<process_info>` element."""
    return (
        f"<process_info><pid>{pid}</pid><type>C</type><process_name>{name}</process_name>"
        f"<used_memory>{used_memory}</used_memory></process_info>"
    )
