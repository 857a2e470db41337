# Shell helpers the benchmarks share; sourced, never run.

# A loopback TCP port nothing listens on (a guess checked by connecting; good enough for a bench).
port() {
  local p=$((20000 + RANDOM % 20000))
  while (echo >/dev/tcp/127.0.0.1/$p) 2>/dev/null; do p=$((p + 1)); done
  echo $p
}

# Waits up to 10 s for something to listen on a loopback port.
wait_port() {
  for _ in $(seq 200); do (echo >/dev/tcp/127.0.0.1/$1) 2>/dev/null && return; sleep 0.05; done
}

# The median of the numbers on stdin, separated by spaces or lines.
median() {
  tr ' ' '\n' | grep . | sort -g |
    awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'
}

# The token bucket script as the store runs it, in layout $1 (hash or compact), from the sources.
bucket_script() {
  cat src/core/token_bucket.lua "src/core/token_bucket_$1.lua" src/stores/redis/calls.lua
}

# A / B to two decimals.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

# The value after "KEY": in a one-line JSON object on stdin: a number, or a string's text (letters,
# digits, dots and dashes) without its quotes.
json() { sed -n "s/.*\"$1\": \"\{0,1\}\([-0-9a-z.]*\).*/\1/p"; }

# CPU time so far, in clock ticks (getconf CLK_TCK a second), of the given processes (all their
# threads) and their children (nginx's workers): "user system" (fields 14 and 15 of
# /proc/PID/stat, counted after the command's name, which may hold spaces).
process_ticks() {
  local pid user=0 system=0 u s
  for pid in "$@" $(pgrep -P "$(tr ' ' , <<<"$*")" || true); do
    read -r u s < <(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | awk '{print $12, $13}' ||
      echo 0 0)
    user=$((user + u)) system=$((system + s))
  done
  echo "$user $system"
}

# process_ticks' user and system summed.
ticks() { process_ticks "$@" | awk '{print $1 + $2}'; }
