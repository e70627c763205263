"""Facts about the cluster: its inventory, the hosts and the provisioned prefix (provenance),
InfiniBand and GPUs (fabric), measured links (calibrate), what it can provide (capabilities),
Hadoop and YARN, and commands on its hosts (remote). Imports only dlobd.spec."""
