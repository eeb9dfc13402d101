"""The audit trail: entries, events, the stream, sinks, delivery, retention, OTLP."""
