#!/usr/bin/env bash
# A throwaway PostgreSQL cluster on a private port, from the system's binaries (trust auth,
# 127.0.0.1 only), for tests that need server settings of their own: nothing touches the
# machine's own cluster.
#
#   cluster.sh start DIR PORT [SETTING=VALUE ...]   initdb in DIR, then start with the settings
#                                                  (postgres -c); the server log is DIR/log
#   cluster.sh stop DIR                             stops it (immediate) and removes DIR
set -euo pipefail

cmd=${1:?usage: cluster.sh start DIR PORT [SETTING=VALUE ...] | stop DIR}
dir=${2:?the cluster directory}
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)

# initdb and postgres refuse to run as root: as root, they run as the postgres user.
as_pg() {
  if [ "$(id -u)" = 0 ]; then
    (cd /tmp && runuser -u postgres -- "$@")
  else
    (cd /tmp && "$@")
  fi
}

case "$cmd" in
start)
  port=${3:?the port}
  shift 3
  mkdir -p "$dir"
  [ "$(id -u)" = 0 ] && chown postgres "$dir"
  as_pg "$bin/initdb" -U postgres --auth=trust -D "$dir/data" >"$dir/initdb.log" 2>&1
  options="-p $port -k /tmp -h 127.0.0.1"
  for setting in "$@"; do options="$options -c $setting"; done
  as_pg "$bin/pg_ctl" -D "$dir/data" -o "$options" -l "$dir/log" -w start >/dev/null
  ;;
stop)
  if [ -f "$dir/data/postmaster.pid" ]; then
    as_pg "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
  ;;
*)
  echo "unknown command $cmd" >&2
  exit 2
  ;;
esac
