"""Capacity models: what is booked."""

from .bookings import Allocation, AnyDeviceBooking, DeviceBooking, ScalarClaim
from .quota import Quota, QuotaCharge, QuotaLoad
from .reservations import Reservation, ReservationEvent
from .rollups import PoolCapacityRollup
from .tokens import TokenLifetime
from .unbooked import UnbookedUse

__all__ = [
    "Allocation",
    "AnyDeviceBooking",
    "DeviceBooking",
    "PoolCapacityRollup",
    "Quota",
    "QuotaCharge",
    "QuotaLoad",
    "Reservation",
    "ReservationEvent",
    "ScalarClaim",
    "TokenLifetime",
    "UnbookedUse",
]
