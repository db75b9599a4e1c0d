#!/usr/bin/env bash
# Runs a control plane binary and kills it when the test process that started it goes away,
# so a crashed or killed test run never leaves etcd or kube-apiserver behind.
parent="$1"; shift
"$@" &
child=$!
trap 'kill -TERM "$child" 2>/dev/null; wait "$child"; exit' TERM INT
while kill -0 "$parent" 2>/dev/null && kill -0 "$child" 2>/dev/null; do sleep 1 & wait $!; done
kill -TERM "$child" 2>/dev/null
for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$child" 2>/dev/null || exit 0; sleep 0.5; done
kill -KILL "$child" 2>/dev/null
