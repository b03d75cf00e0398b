"""What every domain uses: errors, metrics, queues, provider clients, locales, retention."""
