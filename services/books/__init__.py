"""The books: the double-entry journal of every movement of money."""
