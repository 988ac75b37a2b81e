# The envtrain docker sandbox image, built by scripts/ci_docker.sh on a base made locally by
# debootstrap + docker import (nothing is pulled).
ARG BASE=envtrain/base:bookworm
FROM ${BASE}
# The workspace mount point; commands run as an unprivileged uid chosen per container.
RUN mkdir -p /workspace && chmod 0777 /workspace && rm -rf /var/lib/apt/lists/* /var/cache/apt/*
ENV LANG=C.UTF-8 PATH=/usr/local/bin:/usr/bin:/bin HOME=/workspace
WORKDIR /workspace
CMD ["sleep", "infinity"]
