"""Sample `nvidia-smi topo -m` outputs, as the tool prints them, shared by the inventory tests."""

# An 8-GPU DGX H100 board piped to a file: tabs, every GPU pair NV18, four NICs, the `GPU NUMA ID` column
# of newer drivers (with the extra tab nvidia-smi prints before it) and the NIC Legend.
DGX_H100 = (
    "\tGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\tGPU6\tGPU7\tNIC0\tNIC1\tNIC2\tNIC3\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
    "GPU0\t X \tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tPXB\tNODE\tSYS\tSYS\t0-55,112-167\t0\t\tN/A\n"
    "GPU1\tNV18\t X \tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tPXB\tNODE\tSYS\tSYS\t0-55,112-167\t0\t\tN/A\n"
    "GPU2\tNV18\tNV18\t X \tNV18\tNV18\tNV18\tNV18\tNV18\tNODE\tPXB\tSYS\tSYS\t0-55,112-167\t0\t\tN/A\n"
    "GPU3\tNV18\tNV18\tNV18\t X \tNV18\tNV18\tNV18\tNV18\tNODE\tPXB\tSYS\tSYS\t0-55,112-167\t0\t\tN/A\n"
    "GPU4\tNV18\tNV18\tNV18\tNV18\t X \tNV18\tNV18\tNV18\tSYS\tSYS\tPXB\tNODE\t56-111,168-223\t1\t\tN/A\n"
    "GPU5\tNV18\tNV18\tNV18\tNV18\tNV18\t X \tNV18\tNV18\tSYS\tSYS\tPXB\tNODE\t56-111,168-223\t1\t\tN/A\n"
    "GPU6\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\t X \tNV18\tSYS\tSYS\tNODE\tPXB\t56-111,168-223\t1\t\tN/A\n"
    "GPU7\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\t X \tSYS\tSYS\tNODE\tPXB\t56-111,168-223\t1\t\tN/A\n"
    "NIC0\tPXB\tPXB\tNODE\tNODE\tSYS\tSYS\tSYS\tSYS\t X \tNODE\tSYS\tSYS\t\n"
    "NIC1\tNODE\tNODE\tPXB\tPXB\tSYS\tSYS\tSYS\tSYS\tNODE\t X \tSYS\tSYS\t\n"
    "NIC2\tSYS\tSYS\tSYS\tSYS\tPXB\tPXB\tNODE\tNODE\tSYS\tSYS\t X \tNODE\t\n"
    "NIC3\tSYS\tSYS\tSYS\tSYS\tNODE\tNODE\tPXB\tPXB\tSYS\tSYS\tNODE\t X \t\n"
    "\n"
    "Legend:\n"
    "\n"
    "  X    = Self\n"
    "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)\n"
    "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node\n"
    "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
    "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)\n"
    "  PIX  = Connection traversing at most a single PCIe bridge\n"
    "  NV#  = Connection traversing a bonded set of # NVLinks\n"
    "\n"
    "NIC Legend:\n"
    "\n"
    "  NIC0: mlx5_0\n"
    "  NIC1: mlx5_1\n"
    "  NIC2: mlx5_2\n"
    "  NIC3: mlx5_3\n"
)

# A two-socket PCIe box as a terminal shows it (tabs expanded to spaces), from a driver that prints
# neither NICs nor the GPU NUMA ID column.
PCIE_TWO_SOCKETS = """\
        GPU0    GPU1    GPU2    GPU3    GPU4    GPU5    GPU6    GPU7    CPU Affinity    NUMA Affinity
GPU0     X      PIX     PXB     PXB     SYS     SYS     SYS     SYS     0-23,48-71      0
GPU1    PIX      X      PXB     PXB     SYS     SYS     SYS     SYS     0-23,48-71      0
GPU2    PXB     PXB      X      PIX     SYS     SYS     SYS     SYS     0-23,48-71      0
GPU3    PXB     PXB     PIX      X      SYS     SYS     SYS     SYS     0-23,48-71      0
GPU4    SYS     SYS     SYS     SYS      X      PIX     PXB     PXB     24-47,72-95     1
GPU5    SYS     SYS     SYS     SYS     PIX      X      PXB     PXB     24-47,72-95     1
GPU6    SYS     SYS     SYS     SYS     PXB     PXB      X      PIX     24-47,72-95     1
GPU7    SYS     SYS     SYS     SYS     PXB     PXB     PIX      X      24-47,72-95     1

Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
"""

# A 4-GPU A100 board on a terminal: the header is underlined with ANSI codes, NIC rows follow the GPU
# rows, NICs sit at PXB to their GPUs and SYS to the others.
A100_WITH_NICS = (
    "\t\x1b[4mGPU0\tGPU1\tGPU2\tGPU3\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n"
    "GPU0\t X \tNV12\tNV12\tNV12\tPXB\tSYS\t48-63,176-191\t3\t\tN/A\n"
    "GPU1\tNV12\t X \tNV12\tNV12\tPXB\tSYS\t48-63,176-191\t3\t\tN/A\n"
    "GPU2\tNV12\tNV12\t X \tNV12\tSYS\tPXB\t16-31,144-159\t1\t\tN/A\n"
    "GPU3\tNV12\tNV12\tNV12\t X \tSYS\tPXB\t16-31,144-159\t1\t\tN/A\n"
    "NIC0\tPXB\tPXB\tSYS\tSYS\t X \tSYS\n"
    "NIC1\tSYS\tSYS\tPXB\tPXB\tSYS\t X \n"
    "\n"
    "Legend:\n"
    "\n"
    "  X    = Self\n"
    "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)\n"
    "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node\n"
    "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
    "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)\n"
    "  PIX  = Connection traversing at most a single PCIe bridge\n"
    "  NV#  = Connection traversing a bonded set of # NVLinks\n"
    "\n"
    "NIC Legend:\n"
    "\n"
    "  NIC0: mlx5_0\n"
    "  NIC1: mlx5_1\n"
)

# The same DGX as `nvidia-smi topo -mp` prints it: PCIe paths only, so the GPU pairs read NODE/SYS and the
# legend has no NV# line. Importing it would erase every NVLink.
DGX_H100_MP = (
    "\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
    "GPU0\t X \tNODE\tNODE\tNODE\t0-55,112-167\t0\t\tN/A\n"
    "GPU1\tNODE\t X \tNODE\tNODE\t0-55,112-167\t0\t\tN/A\n"
    "GPU2\tNODE\tNODE\t X \tNODE\t0-55,112-167\t0\t\tN/A\n"
    "GPU3\tNODE\tNODE\tNODE\t X \t0-55,112-167\t0\t\tN/A\n"
    "\n"
    "Legend:\n"
    "\n"
    "  X    = Self\n"
    "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)\n"
    "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node\n"
    "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
    "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)\n"
    "  PIX  = Connection traversing at most a single PCIe bridge\n"
)
