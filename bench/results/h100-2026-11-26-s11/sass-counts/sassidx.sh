#!/bin/bash
# prints instruction index of interesting instructions per function
awk '/Function :/{print "== "$3; n=0; next} /^        \/\*[0-9a-f][0-9a-f][0-9a-f][0-9a-f]\*\// {n++; line=$0; sub(/^ *\/\*[0-9a-f]*\*\/ */,"",line); sub(/ *;.*$/,"",line); if (line ~ PAT) print n": "line}' PAT="${2:-LDG|EXIT|BRA|BAR|CALL|HMMA|STG}" "$1"
