"""gunicorn's settings for `make run` (and production): what the command line does not say.

gunicorn names itself in a `Server: gunicorn` header on every answer, which tells every client
(and scanner) what serves Berth; it has no setting to turn that off, so the name it sends is set
here, before it answers anything.
"""

import gunicorn.http.wsgi

gunicorn.http.wsgi.SERVER = "Berth"
