#!/bin/bash
# A grid sweep on Kubernetes: an Indexed Job with one pod per slice, then a merge Job once it has
# ended, whatever its outcome (deploy/k8s-sweep.yaml). Needs kubectl for the cluster, the image
# (the repository's Dockerfile, pushed where the cluster pulls from) and the claim of
# deploy/k8s-pvc.yaml (applied once).
#
#   deploy/k8s-sweep.sh SCENARIO SLICES --image IMAGE [--name NAME]              the sweep, its merge
#   deploy/k8s-sweep.sh SCENARIO SLICES --image IMAGE [--name NAME] --only 3,7   re-run slices 3 and 7
#   … --print                                 print the Jobs instead of running them
#
# SCENARIO is a path inside the image (the shipped ones as in the repository:
# scenarios/sweeps/final-grid.toml). Slices are numbered 0 … SLICES−1; slice K writes
# /results/NAME/parts/slice-K and the merge /results/NAME/merged on the claim (NAME defaults to
# the scenario's file name with -sweep; the Jobs are shardsim-NAME-clear, -slices and -merge,
# each replacing the previous sweep's of that name). A whole sweep first clears NAME's earlier slices and
# merge; a re-run keeps the others. The script waits for each Job and prints the merge's report;
# PARALLELISM (default: every slice) bounds the pods at once.

set -euo pipefail

usage="usage: deploy/k8s-sweep.sh SCENARIO SLICES --image IMAGE [--name NAME] [--only K,K…] [--print]"
fail() { echo "k8s-sweep: $*" >&2; exit 2; }

scenario="${1:-}"
slices="${2:-}"
[ -n "$scenario" ] && [ -n "$slices" ] || fail "$usage"
shift 2
[[ "$slices" =~ ^[1-9][0-9]*$ ]] || fail "SLICES is ${slices@Q}: give the slice count, a whole number from 1 ($usage)"
base="$(basename "$scenario" .toml)"
image="" name="$(tr 'A-Z_.' 'a-z--' <<<"$base")-sweep" only="" print=""
while [ $# -gt 0 ]; do
  case "$1" in
    --image) image="${2:?--image needs the image, e.g. registry.example.com/shardsim:0.1.0}"; shift 2 ;;
    --name) name="${2:?--name needs a folder name}"; shift 2 ;;
    --only) only="${2:?--only needs the slices to re-run, e.g. 3,7}"; shift 2 ;;
    --print) print=1; shift ;;
    *) fail "unexpected ${1@Q} ($usage)" ;;
  esac
done
[ -n "$image" ] || fail "--image is required: the shardsim image the cluster pulls ($usage)"
safe='^[A-Za-z0-9._/:@+-]+$'
for value in "$scenario" "$image" "$name"; do
  [[ "$value" =~ $safe ]] || fail "${value@Q} may hold only letters, digits and . _ / : @ + -"
done
[[ "$name" =~ ^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$ ]] \
  || fail "--name ${name@Q} names the folder under /results and the Jobs (shardsim-NAME-slices): lower-case letters, digits and -, at most 40"

completions="$slices"
if [ -n "$only" ]; then
  [[ "$only" =~ ^[0-9]+(,[0-9]+)*$ ]] || fail "--only ${only@Q} is not a list such as 3,7: nothing created"
  IFS=',' read -ra listed <<<"$only"
  for k in "${listed[@]}"; do
    [ "$k" -lt "$slices" ] || fail "--only names slice $k, but the slices are 0 … $((slices - 1)): nothing created"
  done
  completions="${#listed[@]}"
fi
self="deploy/k8s-sweep.sh"
rerun="$self $scenario $slices --image $image --name $name --only"

# The template's Jobs with every @NAME@ filled in; document N (1 clear, 2 slices, 3 merge).
template="$(cat "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/k8s-sweep.yaml")"
render() {
  local text="$template"
  text="${text//@COMPLETIONS@/$completions}"
  text="${text//@PARALLELISM@/${PARALLELISM:-$completions}}"
  text="${text//@SLICES@/$slices}"
  text="${text//@ONLY@/$only}"
  text="${text//@IMAGE@/$image}"
  text="${text//@SCENARIO@/$scenario}"
  text="${text//@NAME@/$name}"
  text="${text//@RERUN@/$rerun}"
  awk -v want="$1" '/^---$/ { n++; next } n + 1 == want' <<<"$text"
}

steps=(2 3)
[ -z "$only" ] && steps=(1 2 3)
if [ -n "$print" ]; then
  for step in "${steps[@]}"; do
    echo "---"
    render "$step"
  done
  exit 0
fi

command -v kubectl >/dev/null || fail "kubectl is not on the PATH"
# Creates document $1 (replacing an earlier sweep's Job of its name) and waits until it has
# ended; prints the Job's name.
run_job() {
  local job state
  job="job/shardsim-$name-$(render "$1" | sed -n 's/^  name: shardsim-.*-\([a-z]*\)$/\1/p')"
  kubectl delete "$job" --ignore-not-found --wait=true >/dev/null
  job="$(render "$1" | kubectl create -f - -o name)"
  echo "created $job" >&2
  while :; do
    state="$(kubectl get "$job" -o jsonpath='{range .status.conditions[?(@.status=="True")]}{.type} {end}')"
    case " $state " in
      *" Complete "* | *" Failed "*) break ;;
    esac
    sleep 5
  done
  echo "$job"
}
for step in "${steps[@]}"; do
  job="$(run_job "$step")"
done
kubectl logs "$job" || true
kubectl get "$job" -o jsonpath='{.status.succeeded}' | grep -q 1
