#!/bin/sh
# A sample long-lived agent: says hello, then reports a heartbeat every few seconds until it is stopped.
echo "heartbeat agent up on $(hostname) as pid $$ (${BERTH_INSTANCE_ID:-no instance id})"
trap 'echo "heartbeat agent stopping"; exit 0' TERM INT
n=0
while :; do
  n=$((n + 1))
  echo "heartbeat $n"
  sleep 5 &
  wait $!
done
