#!/usr/bin/env bash
# A pg_auto_failover formation on this machine, from Debian's postgresql-15-auto-failover: a
# monitor and two data nodes on private ports, trust auth, for the failover tests and for trying
# a failover by hand. Everything lives under DIR; nothing touches the machine's own cluster.
#
#   formation.sh start DIR PORT   monitor on PORT, nodes on PORT+1 and PORT+2; waits for a
#                                 primary and a secondary, prints the multi-host URL
#   formation.sh uri DIR          the URL applications use (every node, read-write target)
#   formation.sh state DIR        the monitor's view of the nodes
#   formation.sh primary DIR      the data directory of the current primary
#   formation.sh kill DIR NODE    stops node1 or node2 hard: its keeper and its postmaster get
#                                 SIGKILL (as a machine that dies)
#   formation.sh revive DIR NODE  starts that node's keeper again (it rejoins as a secondary)
#   formation.sh stop DIR         stops everything and removes DIR
set -euo pipefail

cmd=${1:?usage: formation.sh start|uri|state|primary|kill|revive|stop DIR ...}
dir=${2:?the formation directory}
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)

if ! command -v pg_autoctl >/dev/null 2>&1; then
  echo "pg_autoctl is missing; installing postgresql-15-auto-failover from Debian" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15-auto-failover >&2
fi

# pg_autoctl and postgres refuse to run as root: as root, run them as the postgres user, with
# their configuration and state files under DIR.
as_pg() {
  local envs=(PATH="$bin:$PATH" XDG_CONFIG_HOME="$dir/config" XDG_DATA_HOME="$dir/share" XDG_RUNTIME_DIR="$dir/run")
  if [ "$(id -u)" = 0 ]; then
    (cd /tmp && runuser -u postgres -- env "${envs[@]}" "$@")
  else
    (cd /tmp && env "${envs[@]}" "$@")
  fi
}

monitor_url() { echo "postgres://autoctl_node@127.0.0.1:$(cat "$dir/port")/pg_auto_failover?sslmode=disable"; }

keeper() { # keeper NAME: runs pg_autoctl for that node in the background, logging to DIR/NAME.log
  as_pg pg_autoctl run --pgdata "$dir/$1" >>"$dir/$1.log" 2>&1 &
  echo $! >"$dir/$1.keeper"
}

descendants() { # descendants PID...: those processes and every process below them
  local all pids=("$@") added=1
  all=$(ps -e -o pid=,ppid=)
  while [ "$added" = 1 ]; do
    added=0
    for p in $(awk -v list=" ${pids[*]} " 'index(list, " " $2 " ") && !index(list, " " $1 " ") {print $1}' <<<"$all"); do
      pids+=("$p")
      added=1
    done
  done
  echo "${pids[@]}"
}

hard_stop() { # hard_stop NAME: the keeper, its processes and its postmaster with its backends,
  # frozen first (so nothing restarts anything), then killed: as a machine that dies.
  local roots=() pids
  [ -f "$dir/$1.keeper" ] && roots+=("$(cat "$dir/$1.keeper")")
  [ -f "$dir/$1/postmaster.pid" ] && roots+=("$(head -n1 "$dir/$1/postmaster.pid")")
  [ "${#roots[@]}" = 0 ] && return 0
  pids=$(descendants "${roots[@]}")
  # shellcheck disable=SC2086
  kill -STOP $pids 2>/dev/null || true
  # shellcheck disable=SC2086
  kill -KILL $pids 2>/dev/null || true
}

state() { as_pg pg_autoctl show state --pgdata "$dir/monitor" 2>/dev/null; }

wait_for() { # wait_for SECONDS PATTERN...: until the state shows every pattern
  local limit=$1; shift
  for _ in $(seq 1 "$((limit * 2))"); do
    local s ok=1
    s=$(state || true)
    for p in "$@"; do grep -Eq "$p" <<<"$s" || ok=0; done
    [ "$ok" = 1 ] && return 0
    sleep 0.5
  done
  echo "the formation did not reach $* in ${limit}s:" >&2
  state >&2 || true
  return 1
}

case "$cmd" in
start)
  port=${3:?the monitor port}
  mkdir -p "$dir"/{config,share,run}
  echo "$port" >"$dir/port"
  [ "$(id -u)" = 0 ] && chown -R postgres "$dir"
  as_pg pg_autoctl create monitor --pgdata "$dir/monitor" --pgport "$port" --hostname 127.0.0.1 \
    --auth trust --no-ssl --pgctl "$bin/pg_ctl" >>"$dir/monitor.log" 2>&1
  keeper monitor
  for _ in $(seq 1 60); do pg_isready -q -h 127.0.0.1 -p "$port" && break; sleep 0.5; done
  # Failures are noticed in seconds rather than the default tens of seconds, and a primary that
  # stopped answering is given 5 s (not 30 s) to step down before its secondary is promoted.
  as_pg psql -q -h 127.0.0.1 -p "$port" -U postgres -d pg_auto_failover \
    -c "ALTER SYSTEM SET pgautofailover.health_check_period = 1000" \
    -c "ALTER SYSTEM SET pgautofailover.health_check_timeout = 1000" \
    -c "ALTER SYSTEM SET pgautofailover.health_check_max_retries = 1" \
    -c "ALTER SYSTEM SET pgautofailover.health_check_retry_delay = 500" \
    -c "ALTER SYSTEM SET pgautofailover.node_considered_unhealthy_timeout = 3000" \
    -c "ALTER SYSTEM SET pgautofailover.primary_demote_timeout = 5000" \
    -c "SELECT pg_reload_conf()" >/dev/null
  for n in 1 2; do
    as_pg pg_autoctl create postgres --pgdata "$dir/node$n" --pgport "$((port + n))" --hostname 127.0.0.1 \
      --name "node$n" --auth trust --no-ssl --pgctl "$bin/pg_ctl" --monitor "$(monitor_url)" \
      >>"$dir/node$n.log" 2>&1
    keeper "node$n"
    if [ "$n" = 1 ]; then wait_for 60 'node1 .*\| +single +\| +single'; fi
  done
  wait_for 120 '\| +primary +\| +primary' '\| +secondary +\| +secondary'
  as_pg pg_autoctl show uri --formation default --pgdata "$dir/monitor"
  ;;
uri) as_pg pg_autoctl show uri --formation default --pgdata "$dir/monitor" ;;
state) state ;;
primary)
  name=$(state | awk -F'|' '$6 ~ /primary/ && $7 ~ /primary/ {gsub(/ /, "", $1); print $1}')
  echo "$dir/$name"
  ;;
kill) hard_stop "${3:?node1 or node2}" ;;
revive) keeper "${3:?node1 or node2}" ;;
stop)
  for n in node1 node2 monitor; do hard_stop "$n"; done
  rm -rf "$dir"
  ;;
*) echo "unknown command $cmd" >&2; exit 2 ;;
esac
