#!/usr/bin/env bash
# Validates docker-compose.yml without a Docker engine: `docker-compose config` only parses and resolves it.
# Installs Debian's docker-compose when no compose command is available.
set -euo pipefail
cd "$(dirname "$0")/.."
export KLEA_API_TOKEN="${KLEA_API_TOKEN:-compose-config-check-token}"
export KLEA_PAYLOAD_KEY="${KLEA_PAYLOAD_KEY:-k1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=}"
if docker compose version >/dev/null 2>&1; then
  docker compose -f docker-compose.yml config -q
elif command -v docker-compose >/dev/null 2>&1; then
  docker-compose -f docker-compose.yml config -q
elif command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
  echo "check-compose: installing docker-compose from Debian's packages"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker-compose >/dev/null 2>&1 || {
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker-compose >/dev/null
  }
  docker-compose -f docker-compose.yml config -q
else
  echo "check-compose: no compose command to validate docker-compose.yml with; skipped" >&2
  exit 0
fi
echo "check-compose: docker-compose.yml is valid"
