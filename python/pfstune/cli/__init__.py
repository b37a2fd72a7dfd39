"""The command line: one module per subcommand, wired together by :mod:`pfstune.cli.main`."""
