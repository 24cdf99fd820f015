#!/usr/bin/env bash
# make test's Kubernetes stage: the one-node cluster of .ci/kube.sh
# (its binaries built once per version, then cached), the tests that run
# against a real cluster (RTTLAB_KUBECONFIG: the Kubernetes runtime's,
# and doctor and clean --runtime kube), and the cluster stopped again;
# the time of each phase is printed at the end. A cluster that was up
# before is used and left up. The agent image (rttlab/agent:latest) is
# copied from the Docker engine into the cluster when the engine has it,
# and RTTLAB_KUBE_AGENT_IMAGE names it to the tests of the node agent;
# an engine without it builds it first with RTTLAB_BIN (bin/rttlab)
# when that binary exists. Without the image those tests skip and say
# why, unless RTTLAB_KUBE_AGENT=required (make test), which makes a
# missing image a failure. RTTLAB_AGENT_IMAGE: another agent image to
# copy instead.
#
# The tests run in three steps: those of one node, with a second node
# (.ci/kube.sh join) cordoned beside it; those of two nodes, with the
# second node taking pods (RTTLAB_KUBE_NODE2 names it); and, after the
# second node has left, the registry's, which must be last (containerd
# 1.6 then loses the imported name of an image it pulled under
# another). A cluster that was up before keeps a second node it had; one
# it lacked is added and taken away again.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", b - a }'; }

was_up=0
if bash .ci/kube.sh status | grep -q '^KUBECONFIG='; then was_up=1; fi
# A second node the cluster had before is kept (cordoned for the tests
# of one node and the registry's, given back to the scheduler at the
# end); one it lacked is added (joined=1) and taken away again.
had_node2=0 joined=0 kubectl="" kubeconfig="" node2=""
if [ -d /run/rttlab-kube/node2 ]; then had_node2=1; fi
t0=$(now)
GO=$GO bash .ci/kube.sh build
t1=$(now)
# leave takes away the second node the test added, or cordons the one it
# found.
leave() {
  if [ $joined = 1 ]; then
    bash .ci/kube.sh leave
    joined=0 node2=""
  elif [ -n "$node2" ]; then
    "$kubectl" --kubeconfig "$kubeconfig" cordon "$node2" >/dev/null
  fi
}
# down leaves the cluster as the test found it.
down() {
  if [ $was_up = 0 ]; then
    bash .ci/kube.sh down
    return
  fi
  if [ $joined = 1 ]; then
    leave
  elif [ -n "$node2" ]; then
    "$kubectl" --kubeconfig "$kubeconfig" uncordon "$node2" >/dev/null
  fi
}
trap 'rc=$?; trap - EXIT INT TERM; down >&2 || rc=1; exit $rc' EXIT
trap 'exit 130' INT TERM
up_out=$(GO=$GO bash .ci/kube.sh up)
printf '%s\n' "$up_out"
kubeconfig=$(printf '%s\n' "$up_out" | sed -n 's/^KUBECONFIG=//p' | tail -n 1)
# The registry beside the cluster, for the run that pushes its images.
RTTLAB_KUBE_REGISTRY=$(printf '%s\n' "$up_out" | sed -n 's/^registry: \([^ ]*\) .*/\1/p' | tail -n 1)
export RTTLAB_KUBE_REGISTRY
[ -n "$kubeconfig" ] || { echo "kubetest: .ci/kube.sh up printed no KUBECONFIG line" >&2; exit 1; }
kubectl=$(printf '%s\n' "$up_out" | sed -n 's/^kubectl: //p' | tail -n 1)
bash .ci/kube.sh join
[ $had_node2 = 1 ] || joined=1
node2=$(cat /run/rttlab-kube/node2/name)
"$kubectl" --kubeconfig "$kubeconfig" cordon "$node2" >/dev/null
t2=$(now)
agent_image=${RTTLAB_AGENT_IMAGE:-rttlab/agent:latest}
rttlab_bin=${RTTLAB_BIN:-bin/rttlab}
if [ -z "${RTTLAB_AGENT_IMAGE:-}" ] && [ -x "$rttlab_bin" ] && docker info >/dev/null 2>&1; then
  # Built from this tree (an image already up to date is kept): the
  # agent image carries the rttlab binary its sessions run.
  "$rttlab_bin" images build agent go postgres >&2
fi
# try_import IMAGE... imports the images into every node and prints what
# kube.sh said; where one is missing (exit 3) it returns 3 and leaves the
# reason, one line, in $missing; any other failure ends the tests.
try_import() {
  local out rc=0
  out=$(bash .ci/kube.sh import "$@" 2>&1) || rc=$?
  printf '%s\n' "$out" >&2
  [ $rc = 0 ] || [ $rc = 3 ] || exit $rc
  missing=${out##*$'\n'}
  return $rc
}
# The agent, and the go app's stack for the study run on the cluster, in
# one import: one archive and one wait for the kubelets to list them.
stack_images="rttlab/postgres:latest rttlab/go:latest"
# shellcheck disable=SC2086
if try_import "$agent_image" $stack_images; then
  export RTTLAB_KUBE_AGENT_IMAGE=$agent_image
else
  # One is missing, so one at a time: without the agent image the node
  # agent's tests skip and say why; without the stack's the study's test
  # does (unless RTTLAB_KUBE_AGENT=required, which makes either a
  # failure).
  if try_import "$agent_image"; then
    export RTTLAB_KUBE_AGENT_IMAGE=$agent_image
  elif [ "${RTTLAB_KUBE_AGENT:-}" = required ]; then
    echo "kubetest: the node agent's tests need the agent image on the cluster: $missing" >&2
    exit 1
  else
    export RTTLAB_KUBE_AGENT_IMAGE_MISSING=$missing
  fi
  for img in $stack_images; do
    try_import "$img" || [ "${RTTLAB_KUBE_AGENT:-}" != required ] || exit 1
  done
fi
t3=$(now)
export RTTLAB_INTEGRATION=1 RTTLAB_KUBECONFIG=$kubeconfig
"$GO" test -count=1 -p 1 -timeout 15m -v -run 'Kube' -skip 'TwoNodes|KubeRegistry' ./orchestrator/kube ./cmd/rttlab
t4=$(now)
"$kubectl" --kubeconfig "$kubeconfig" uncordon "$node2" >/dev/null
RTTLAB_KUBE_NODE2=$node2 RTTLAB_KUBE_NODE2_NETNS=rttlab-node2 "$GO" test -count=1 -p 1 -timeout 15m -v -run 'KubeTwoNodes' ./cmd/rttlab
t5=$(now)
leave
"$GO" test -count=1 -p 1 -timeout 15m -v -run 'KubeRegistry' ./cmd/rttlab
t6=$(now)
trap - EXIT INT TERM
down
t7=$(now)
echo "kube stage: build $(secs "$t0" "$t1") s (cached after the first), cluster up and second node joined $(secs "$t1" "$t2") s, images built and imported $(secs "$t2" "$t3") s, one-node tests $(secs "$t3" "$t4") s, two-node tests $(secs "$t4" "$t5") s, registry test $(secs "$t5" "$t6") s, down $(secs "$t6" "$t7") s"
