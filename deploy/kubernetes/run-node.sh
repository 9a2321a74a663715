#!/bin/sh
# One node's iolab run inside the container (deploy/kubernetes/*.yaml): the
# same steps as the Ansible role, writing the fleet layout `iolab report
# --fleet` reads into $IOLAB_FLEET_DIR/$NODE_NAME:
#   host.json (how it ended), topology.json, probe-NNN.json, results.json.
#
# Environment:
#   NODE_NAME            the node (the manifests set it from spec.nodeName)
#   IOLAB_FLEET_DIR      default /var/lib/iolab-fleet (a hostPath mount)
#   IOLAB_PROBE_TARGETS  space-separated targets for iolab probe (default: the
#                        node's directory, so a temp file on the node's disk)
#   IOLAB_STUDIES        space-separated studies (default: all)
#   IOLAB_QUICK          1 (default) for --quick, 0 for the full lab
#   IOLAB_PROBE_RUNTIME  seconds per completion model (default 1)
set -u
node=${NODE_NAME:?NODE_NAME must name the node (the manifests set it from spec.nodeName)}
out=${IOLAB_FLEET_DIR:-/var/lib/iolab-fleet}/$node
work=$(mktemp -d /tmp/iolab-node.XXXXXX)
trap 'rm -rf "$work"' EXIT
rm -rf "$out" && mkdir -p "$out" || exit 1

# JSON string escaping for the record (backslash, quote, newlines).
json_str() {
    printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' | awk 'BEGIN{ORS=""} NR>1{print "\\n"} {print}'
}
record() { # status [task error]
    if [ "$1" = ok ]; then
        printf '{"host":"%s","status":"ok","quick":%s}\n' "$(json_str "$node")" "$quick_json" >"$out/host.json"
    else
        printf '{"host":"%s","status":"failed","failed_task":"%s","error":"%s","quick":%s}\n' \
            "$(json_str "$node")" "$(json_str "$2")" "$(json_str "$3")" "$quick_json" >"$out/host.json"
    fi
}

quick_flag=--quick
quick_json=true
if [ "${IOLAB_QUICK:-1}" = 0 ]; then quick_flag=; quick_json=false; fi

if ! iolab topology --json >"$out/topology.json" 2>"$work/err"; then
    record failed "iolab topology" "$(cat "$work/err")"; exit 1
fi
i=0
failed=
for t in ${IOLAB_PROBE_TARGETS:-$out}; do
    f=$(printf '%s/probe-%03d.json' "$out" "$i")
    if ! iolab probe "$t" --json --runtime "${IOLAB_PROBE_RUNTIME:-1}" >"$f" 2>"$work/err"; then
        rm -f "$f"
        failed="$failed$t: $(cat "$work/err")
"
    fi
    i=$((i + 1))
done
if [ -n "$failed" ]; then
    record failed "iolab probe" "$failed"; exit 1
fi
# shellcheck disable=SC2086 # studies are words on purpose
if ! iolab lab ${IOLAB_STUDIES:-} $quick_flag --out "$work/lab" >"$work/lab.log" 2>"$work/err"; then
    record failed "iolab lab" "$(cat "$work/err")"; exit 1
fi
cp "$work/lab/results.json" "$out/results.json" && record ok
