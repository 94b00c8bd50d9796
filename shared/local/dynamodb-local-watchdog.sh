#!/bin/sh
# Runs DynamoDB Local (java with this script's arguments) for as long as the process that started
# it lives. That process holds this script's stdin open and never writes to it; however it ends,
# a kill -9 included, the kernel closes the pipe, the read below sees end of file and the JVM is
# stopped. A JVM that exits by itself ends the script with its status.
command -v java >/dev/null 2>&1 || { echo 'java: not found' >&2; exit 127; }
# A background list reads /dev/null unless told otherwise: keep the pipe as fd 3 for the watcher.
exec 3<&0
java "$@" </dev/null 3<&- &
jvm=$!
{ cat <&3 >/dev/null; kill "$jvm" 2>/dev/null; } &
wait "$jvm"
