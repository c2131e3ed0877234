"""Choice sets the OpenAPI schema names once (settings.SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"])."""

from capacity.models import Reservation

RESERVATION_STATUSES = Reservation.Status.choices
PRIORITIES = Reservation.Priority.choices
