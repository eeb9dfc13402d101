# toolcrib as a container image: one gateway replica per container (README, "Replicas over
# PostgreSQL"). Build from the repository root: docker build -t toolcrib .
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
# mcp-server-time: the stdio server deploy/org.yaml connects as `time` runs inside this image.
RUN pip install '.[postgres]' 'mcp-server-time>=2025.1' && useradd --create-home --uid 10001 toolcrib

USER toolcrib
WORKDIR /home/toolcrib
ENV TOOLCRIB_HOST=0.0.0.0 TOOLCRIB_PORT=8765
EXPOSE 8765
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8765/healthz', timeout=2)"
CMD ["toolcrib", "serve"]
