# The sandbox base image: a Python, the test tooling taskforge needs, a
# non-root user. Per-repository environment images are committed on top of it
# by `taskforge` (dependencies installed, the repository editable from
# /workspace), so the repository's code never lives in an image layer.
#
#   docker build -t taskforge/base .                       # with a registry
#   docker build --build-arg BASE=taskforge/debian-python:bookworm -t taskforge/base .
#
# `taskforge image build` does this with the host's pip settings and CA bundle.
ARG BASE=python:3.11-slim
FROM ${BASE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/tf/venv \
    PATH=/opt/tf/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# pip.conf and ca-bundle.crt are optional (the globs match nothing without them);
# taskforge drops the host's in when the host reaches the index through a proxy.
COPY Dockerfile pip.con[f] ca-bundle.cr[t] /opt/tf/build/

# The common locales, generated: test suites that switch locale (natsort's
# en_US.UTF-8 and de_DE tests) pass here as on a developer's machine. Keep the
# list equal to LOCALES in taskforge/sandbox/bwrap/rootfs.py (a test checks).
ARG LOCALES="en_US.UTF-8 UTF-8|en_US ISO-8859-1|en_GB.UTF-8 UTF-8|de_DE.UTF-8 UTF-8|de_DE ISO-8859-1|fr_FR.UTF-8 UTF-8|es_ES.UTF-8 UTF-8|it_IT.UTF-8 UTF-8|nl_NL.UTF-8 UTF-8|pt_BR.UTF-8 UTF-8|ru_RU.UTF-8 UTF-8|ja_JP.UTF-8 UTF-8|zh_CN.UTF-8 UTF-8"
RUN set -eu; \
    if ! command -v locale-gen >/dev/null 2>&1; then \
      (apt-get update -qq && apt-get install -y -qq --no-install-recommends locales >/dev/null \
       && rm -rf /var/lib/apt/lists/*) || echo "warning: no locales package: only C.UTF-8" >&2; \
    fi; \
    if command -v locale-gen >/dev/null 2>&1; then \
      echo "$LOCALES" | tr '|' '\n' > /etc/locale.gen && locale-gen >/dev/null; \
    fi; \
    if [ -f /opt/tf/build/pip.conf ]; then cp /opt/tf/build/pip.conf /etc/pip.conf; fi; \
    python3 -m venv /opt/tf/venv; \
    /opt/tf/venv/bin/pip install "pytest>=7.4" "pytest-cov>=4.1" "coverage>=7.4"; \
    if ! getent passwd 1000 >/dev/null; then useradd -u 1000 -U -m -s /bin/sh sandbox; fi; \
    mkdir -p /workspace /opt/tf/out; \
    chown 1000:1000 /workspace /opt/tf/out

USER 1000
WORKDIR /workspace
CMD ["sleep", "infinity"]
