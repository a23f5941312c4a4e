from seedr.cli import app

app(prog_name="seedr")
