"""Pieces of the lab's "ironic" service (see lab/services/ironic.py).

hosts     the emulated machines (stable UUID, name, MAC, IP) and the lab inventory
install   the lab's own Ironic venv and the Debian packages it needs
configs   ironic.conf, sushy-tools and MariaDB configuration files
mariadb   the private MariaDB server Ironic runs on
bmc_proxy the fault-injection proxy in front of the Redfish emulator (a process)
faults    client for the proxy's control endpoint
iso       boot ISO and test images; the BMC's view (virtual media) and config drives read back
"""
