"""pio, files striped over I/O servers: its benchmark."""
