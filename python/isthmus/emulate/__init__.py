"""The emulated platform on one machine: network namespaces per host, the user-space TUN
router that applies the links (latency, rate, queue, loss), and its self-test."""
