#!/bin/sh
# Bans functions that have no place in this code base (curl's checksrc idea).
dir=${1:-src}
bad=$(grep -rnE '\b(strcpy|sprintf|vsprintf|strtok|atoi|atol|gets|system)\s*\(' "$dir" --include='*.c' --include='*.h' |
      grep -vE '^\S+:[0-9]+:\s*(/\*|\*|//)')
if [ -n "$bad" ]; then
        echo "banned functions used (use snprintf, strtol, strtok_r...):" >&2
        echo "$bad" >&2
        exit 1
fi
echo "source check: ok"
