#!/usr/bin/env bash
# Embedding tables on the PS shards: sparse against dense steps, the ctr
# model against PyTorch, a shard's memory against what it holds: embed.py.
exec /usr/bin/python3 "$(dirname "$0")/embed.py" "$@"
