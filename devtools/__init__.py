"""Developer tooling: `make run`, throwaway servers for `make test`. Not imported by the app."""
