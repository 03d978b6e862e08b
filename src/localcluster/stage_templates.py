"""kwok Stage status templates (Go templates that kwok renders against the Pod) for the test stages.

kwok applies a rendered template as a strategic-merge patch of the Pod status: conditions merge by type,
containerStatuses is replaced as a whole. `PodIPWith` hands out an IP from kwok's --cidr pool.
"""

from __future__ import annotations

# Written into the status of every pod a test stage starts, so that a canary pod shows which stage kwok used.
MARKER = "started by a kcop test stage"

_NODE_AND_POD_IP = """
message: MARKER_TEXT
hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
podIP: {{ PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) \
( or .metadata.name "" ) ( or .metadata.namespace "" ) | Quote }}
phase: Running
startTime: {{ $now | Quote }}
""".replace("MARKER_TEXT", f'"{MARKER}"')

_NOT_READY_CONDITIONS = """
conditions:
- {type: Initialized, status: "True", lastTransitionTime: {{ $now | Quote }}}
- {type: Ready, status: "False", lastTransitionTime: {{ $now | Quote }}}
- {type: ContainersReady, status: "False", lastTransitionTime: {{ $now | Quote }}}
"""

# Container running, readiness probe not passing yet: a booting Keycloak.
STARTED_NOT_READY = (
    "{{ $now := Now }}"
    + _NOT_READY_CONDITIONS
    + """
containerStatuses:
{{ range .spec.containers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  ready: false
  started: true
  restartCount: 0
  state: {running: {startedAt: {{ $now | Quote }}}}
{{ end }}
"""
    + _NODE_AND_POD_IP
)

# The readiness probe passes: only readiness changes, the container keeps its start time.
BECOME_READY = """{{ $now := Now }}
{{ $started := or .status.startTime $now }}
conditions:
- {type: Ready, status: "True", lastTransitionTime: {{ $now | Quote }}}
- {type: ContainersReady, status: "True", lastTransitionTime: {{ $now | Quote }}}
containerStatuses:
{{ range .spec.containers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  ready: true
  started: true
  restartCount: 0
  state: {running: {startedAt: {{ $started | Quote }}}}
{{ end }}
"""

# A broken image: the container keeps exiting, so the pod gets an IP but is never Ready.
CRASH_LOOP = (
    "{{ $now := Now }}"
    + _NOT_READY_CONDITIONS
    + """
containerStatuses:
{{ range .spec.containers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  ready: false
  started: false
  restartCount: 1
  lastState:
    terminated: {exitCode: 1, reason: Error, startedAt: {{ $now | Quote }}, finishedAt: {{ $now | Quote }}}
  state:
    waiting: {reason: CrashLoopBackOff, message: "back-off restarting failed container (kwok Stage)"}
{{ end }}
"""
    + _NODE_AND_POD_IP
)
