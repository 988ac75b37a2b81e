#!/usr/bin/env bash
# CI: make the docker sandbox backend usable on a Debian/Ubuntu box, with nothing pulled from a registry.
#   scripts/ci_docker.sh            # installs docker.io + debootstrap, starts dockerd, builds envtrain/sandbox:1
# The base image comes from debootstrap (Debian's own apt mirror) + `docker import`; the sandbox image
# is built from docker/sandbox.Dockerfile on top of it. Idempotent: what exists is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
SUITE="${ENVTRAIN_DEBIAN_SUITE:-bookworm}"
# The Debian mirror apt already uses on this machine (deb822 or one-line sources), unless one is given.
apt_mirror() {
  { grep -hs -E '^(URIs:|deb )' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null || true; } \
    | sed -E 's/^URIs:[[:space:]]*//; s/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?//' | awk '{print $1}' \
    | grep -E '/debian/?$' | head -n 1
}
MIRROR="${ENVTRAIN_DEBIAN_MIRROR:-$(apt_mirror)}"
[ -n "$MIRROR" ] || { echo "no Debian mirror found in apt's sources; set ENVTRAIN_DEBIAN_MIRROR" >&2; exit 1; }
BASE="envtrain/base:${SUITE}"
IMAGE="envtrain/sandbox:1"

need=()
command -v dockerd >/dev/null || need+=(docker.io)
command -v debootstrap >/dev/null || need+=(debootstrap)
if ((${#need[@]})); then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi

if ! docker info >/dev/null 2>&1; then
  # No systemd in CI containers: run the daemon in the background, logging beside the repo.
  nohup dockerd >/tmp/envtrain-dockerd.log 2>&1 &
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { echo "dockerd did not start; see /tmp/envtrain-dockerd.log" >&2; exit 1; }
fi

if ! docker image inspect "$BASE" >/dev/null 2>&1; then
  root="$(mktemp -d /tmp/envtrain-rootfs.XXXXXX)"
  debootstrap --variant=minbase --include=python3-minimal,python3,util-linux "$SUITE" "$root" "$MIRROR"
  tar -C "$root" -c . | docker import - "$BASE"
  rm -rf "$root"
fi

if ! docker image inspect "$IMAGE" >/dev/null 2>&1; then
  docker build --pull=false -t "$IMAGE" --build-arg "BASE=$BASE" -f docker/sandbox.Dockerfile docker/
fi
echo "docker sandbox ready: $IMAGE"
