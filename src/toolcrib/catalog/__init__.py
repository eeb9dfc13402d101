"""What tools exist: upstream definition -> exact record + card. Pure: no I/O, no clock."""
