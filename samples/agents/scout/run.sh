#!/bin/sh
# A sample agent that prefers a Raspberry Pi 5: it prints what it was given and waits for work.
echo "scout agent up as pid $$ with args: $*"
echo "LOG_LEVEL=${LOG_LEVEL:-unset}"
trap 'echo "scout agent stopping"; exit 0' TERM INT
while :; do
  sleep 3600 &
  wait $!
done
