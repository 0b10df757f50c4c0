#!/usr/bin/env python3
"""Checks deploy/k8s-sweep.sh's Jobs without a cluster: the rendered manifests against the
Kubernetes schema (kubernetes-validate, strict: an unknown field fails), then the pods' own
commands run here as the cluster would run them (each slice's pod with its completion index, a
re-run with --only, the merge), with /results a temporary folder, and the merge compared byte
for byte with one `shardsim run`; then the script itself end to end against a stand-in
`kubectl` (this file, called by that name) that runs each Job's pods here the same way, one
slice failing. Usage: python k8s-check.py SHARDSIM_BINARY."""

import json
import os
import subprocess
import sys
import tempfile

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(REPO, "deploy", "k8s-sweep.sh")
GRID = """name = "grid"
seed = 3
shards = [1, 2, 4]
duration_s = 1
replications = 2
[hold]
dist = "constant"
ms = 1
[arrivals]
rate_per_s = 1500
[sweep]
"hold.ms" = [0.5, 1, 2]
"""


def render(*args):
    out = subprocess.run([SCRIPT, *args, "--image", "shardsim:test", "--print"],
                         check=True, capture_output=True, text=True).stdout
    return out, [doc for doc in yaml.safe_load_all(out) if doc]


def validate(text, version):
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(text)
    try:
        subprocess.run(["kubernetes-validate", "--strict", "--quiet", "-k", version, f.name],
                       check=True)
    finally:
        os.unlink(f.name)


def run_pod(job, results, cwd, binary, index=None):
    container = job["spec"]["template"]["spec"]["containers"][0]
    command = container["command"] + container.get("args", [])
    command = [part.replace("/results", results) for part in command]
    env = {**os.environ, **{e["name"]: e["value"] for e in container["env"]}}
    env["PATH"] = os.path.dirname(binary) + os.pathsep + env["PATH"]
    if index is not None:
        env["JOB_COMPLETION_INDEX"] = str(index)
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)


def main(binary):
    binary = os.path.abspath(binary)
    for version in ["1.29.0", "1.37.0"]:
        text, _ = render("scenarios/sweeps/final-grid.toml", "12")
        validate(text, version)
        text, _ = render("scenarios/sweeps/final-grid.toml", "12", "--only", "3,7")
        validate(text, version)
        with open(os.path.join(REPO, "deploy", "k8s-pvc.yaml")) as f:
            validate(f.read(), version)
    with tempfile.TemporaryDirectory() as work:
        with open(os.path.join(work, "grid.toml"), "w") as f:
            f.write(GRID)
        results = os.path.join(work, "results")
        os.mkdir(results)
        subprocess.run([binary, "run", "grid.toml", "--out", "single", "-q", "--no-fail", "--every-run"],
                       cwd=work, check=True)
        _, (clear, slices, merge) = render("grid.toml", "3", "--name", "grid")
        assert slices["spec"]["completions"] == 3, slices["spec"]
        assert run_pod(clear, results, work, binary).returncode == 0
        for index in [0, 2]:  # slice 1's pod "failed"
            pod = run_pod(slices, results, work, binary, index)
            assert pod.returncode == 0, pod.stderr
        pod = run_pod(merge, results, work, binary)
        want = ("slice 1 of 3 is missing (2 given; slices are numbered 0 … 2): re-run them: "
                "deploy/k8s-sweep.sh grid.toml 3 --image shardsim:test --name grid --only 1")
        assert pod.returncode == 2 and want in pod.stderr, pod.stderr
        _, (slices, merge) = render("grid.toml", "3", "--name", "grid", "--only", "1")
        assert slices["spec"]["completions"] == 1, slices["spec"]
        pod = run_pod(slices, results, work, binary, 0)
        assert pod.returncode == 0, pod.stderr
        pod = run_pod(merge, results, work, binary)
        assert pod.returncode == 0, pod.stderr
        for name in ["summary.csv", "timeseries.csv", "sweep.csv"]:
            with open(os.path.join(work, "single", name), "rb") as a, \
                    open(os.path.join(results, "grid", "merged", name), "rb") as b:
                assert a.read() == b.read(), name
        # A whole sweep clears the earlier slices first.
        _, (clear, _, _) = render("grid.toml", "3", "--name", "grid")
        assert run_pod(clear, results, work, binary).returncode == 0
        assert not os.path.exists(os.path.join(results, "grid", "parts"))
    print("Kubernetes manifests valid for 1.29 and 1.37; the pods' commands slice, re-run and merge "
          "byte-identically to one run")


def fake_kubectl(args):
    """The kubectl calls deploy/k8s-sweep.sh makes, served from FAKE_KUBE_DIR: `create` runs
    the Job's pods here at once (an Indexed Job's indexes in FAKE_KUBE_FAIL fail without
    running), `get` answers its conditions or successes, `logs` its pods' output, `delete`
    forgets it."""
    state_dir = os.environ["FAKE_KUBE_DIR"]
    results = os.path.join(state_dir, "results")
    os.makedirs(results, exist_ok=True)

    def path(job):
        return os.path.join(state_dir, job.split("/")[-1] + ".json")

    verb = args[0]
    if verb == "delete":
        if os.path.exists(path(args[1])):
            os.unlink(path(args[1]))
        return 0
    if verb == "create":
        job = yaml.safe_load(sys.stdin.read())
        name = job["metadata"]["name"]
        spec = job["spec"]
        failing = {int(i) for i in os.environ.get("FAKE_KUBE_FAIL", "").split(",") if i}
        log, ok = "", True
        if spec.get("completionMode") == "Indexed":
            for index in range(spec["completions"]):
                if index in failing:
                    ok = False
                    continue
                pod = run_pod(job, results, os.getcwd(), os.environ["SHARDSIM_BINARY"], index)
                log += pod.stdout + pod.stderr
                ok = ok and pod.returncode == 0
        else:
            pod = run_pod(job, results, os.getcwd(), os.environ["SHARDSIM_BINARY"])
            log, ok = pod.stdout + pod.stderr, pod.returncode == 0
        with open(path(name), "w") as f:
            json.dump({"ok": ok, "log": log}, f)
        print(f"job.batch/{name}")
        return 0
    with open(path(args[1])) as f:
        job = json.load(f)
    if verb == "get":
        expression = args[args.index("-o") + 1]
        if "conditions" in expression:
            print("Complete " if job["ok"] else "Failed ", end="")
        else:
            print("1" if job["ok"] else "", end="")
        return 0
    if verb == "logs":
        print(job["log"], end="")
        return 0
    return 1


def end_to_end(binary):
    """deploy/k8s-sweep.sh against the stand-in kubectl: slice 1 of 3 fails, the merge names it
    and the script exits 1; the named re-run completes the merge, byte-identical to one run."""
    with tempfile.TemporaryDirectory() as work:
        bin_dir = os.path.join(work, "bin")
        os.mkdir(bin_dir)
        os.symlink(os.path.abspath(__file__), os.path.join(bin_dir, "kubectl"))
        with open(os.path.join(work, "grid.toml"), "w") as f:
            f.write(GRID)
        subprocess.run([binary, "run", "grid.toml", "--out", "single", "-q", "--no-fail", "--every-run"],
                       cwd=work, check=True)
        env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ["PATH"],
               "FAKE_KUBE_DIR": os.path.join(work, "cluster"), "SHARDSIM_BINARY": binary}
        os.makedirs(env["FAKE_KUBE_DIR"])
        sweep = [SCRIPT, "grid.toml", "3", "--image", "shardsim:test", "--name", "grid"]
        first = subprocess.run(sweep, cwd=work, env={**env, "FAKE_KUBE_FAIL": "1"},
                               capture_output=True, text=True)
        want = "re-run them: deploy/k8s-sweep.sh grid.toml 3 --image shardsim:test --name grid --only 1"
        assert first.returncode == 1 and want in first.stdout, (first.stdout, first.stderr)
        again = subprocess.run(sweep + ["--only", "1"], cwd=work, env=env,
                               capture_output=True, text=True)
        assert again.returncode == 0, (again.stdout, again.stderr)
        merged = os.path.join(env["FAKE_KUBE_DIR"], "results", "grid", "merged")
        for name in ["summary.csv", "timeseries.csv", "sweep.csv"]:
            with open(os.path.join(work, "single", name), "rb") as a, \
                    open(os.path.join(merged, name), "rb") as b:
                assert a.read() == b.read(), name
    print("deploy/k8s-sweep.sh end to end (a stand-in kubectl): a failed slice named with its "
          "re-run, which completes the merge byte-identically")


if __name__ == "__main__":
    if os.path.basename(sys.argv[0]) == "kubectl":
        sys.exit(fake_kubectl(sys.argv[1:]))
    main(sys.argv[1])
    end_to_end(os.path.abspath(sys.argv[1]))
