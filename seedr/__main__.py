from seedr.cli import run

run()
