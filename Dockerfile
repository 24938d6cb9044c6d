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

RUN set -eu; \
    if [ -f /opt/tf/build/pip.conf ]; then cp /opt/tf/build/pip.conf /etc/pip.conf; fi; \
    python3 -m venv /opt/tf/venv; \
    /opt/tf/venv/bin/pip install "pytest>=7.4" "pytest-cov>=4.1" "coverage>=7.4"; \
    if ! getent passwd 1000 >/dev/null; then useradd -u 1000 -U -m -s /bin/sh sandbox; fi; \
    mkdir -p /workspace /opt/tf/out; \
    chown 1000:1000 /workspace /opt/tf/out

USER 1000
WORKDIR /workspace
CMD ["sleep", "infinity"]
