"""What trainers use: shards, the reward API and server, curriculum, exports, episodes."""
