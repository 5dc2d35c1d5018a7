"""Allow ``python -m sparsedebug``."""

from sparsedebug.cli.app import main

if __name__ == "__main__":
    main()
