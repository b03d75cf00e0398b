"""The provider's statements against our books: its balance read, each day reconciled
(docs/books.md)."""
