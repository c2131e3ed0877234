"""Capacity models: what is booked."""

from .bookings import Allocation, DeviceBooking, ScalarClaim
from .quota import Quota, QuotaCharge
from .reservations import Reservation, ReservationEvent
from .rollups import PoolCapacityRollup

__all__ = [
    "Allocation",
    "DeviceBooking",
    "PoolCapacityRollup",
    "Quota",
    "QuotaCharge",
    "Reservation",
    "ReservationEvent",
    "ScalarClaim",
]
