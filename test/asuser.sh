#!/usr/bin/env bash
# The test suite again, as an ordinary user: MCP clients start autobox as the
# person at the keyboard, not as root, and what autobox enforces differs (user
# namespaces instead of root's own). `make test` run as root calls this after
# its own pass: it makes the user (useradd, saying so first) if missing, copies this tree into
# the user's home (bin/ aside), and runs `make test` there as that user.
# AUTOBOX_TEST_USER names the user (default autobox-test).
# `asuser.sh make-user` makes the user and stops.
set -euo pipefail
cd "$(dirname "$0")/.."
user=${AUTOBOX_TEST_USER:-autobox-test}
if [ "$(id -u)" != 0 ]; then
  echo "test/asuser.sh: run as root (it makes the user and runs the suite as them)" >&2
  exit 2
fi
if ! id "$user" >/dev/null 2>&1; then
  echo "test/asuser.sh: creating the user $user (useradd --create-home) for make test's ordinary-user pass; remove it with: userdel -r $user"
  useradd --create-home --shell /bin/bash "$user"
fi
# `asuser.sh make-user`: only that (the root pass has tests that hand the user
# a cgroup subtree).
[ "${1:-}" = make-user ] && exit 0
home=$(getent passwd "$user" | cut -d: -f6)
dest=$home/autobox-src
rm -rf "$dest"
mkdir -p "$dest"
tar -c --exclude=./bin --exclude=./bench . | tar -x -C "$dest"
chown -R "$user:" "$dest"
go=$(command -v go || true)
[ -n "$go" ] || go=/usr/local/go/bin/go # as the Makefile finds it
node_path=$(command -v node || true)
path=$(dirname "$go"):/usr/local/bin:/usr/bin:/bin
[ -n "$node_path" ] && path=$(dirname "$node_path"):$path
echo "== make test as $user (uid $(id -u "$user")), in $dest"
exec runuser -u "$user" -- env -i HOME="$home" PATH="$path" CI="${CI:-}" LANG=C.UTF-8 \
  GOFLAGS="${GOFLAGS:-}" GOPROXY="$("$go" env GOPROXY)" make -C "$dest" test
