"""The command-line interface: thin typer commands over the library."""
