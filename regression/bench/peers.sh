#!/usr/bin/env bash
# cairn against PyTorch 1.13 on the same model, data and cores: peers.py.
exec /usr/bin/python3 "$(dirname "$0")/peers.py" "$@"
