"""The one rollout engine: episodes, trajectory records, filters and resumable datasets."""
