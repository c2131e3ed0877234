"""Capacity models: what is booked."""

from .bookings import Allocation, AnyAllocation, AnyDeviceBooking, DeviceBooking, ScalarClaim
from .policy import PoolPolicy
from .quota import Quota, QuotaCharge, QuotaLoad
from .reservations import AnyReservation, Reservation, ReservationEvent
from .rollups import PoolCapacityRollup
from .series import Series
from .shares import PoolShare
from .tokens import TokenLifetime
from .versions import PoolBookingVersion

__all__ = [
    "Allocation",
    "AnyAllocation",
    "AnyDeviceBooking",
    "AnyReservation",
    "DeviceBooking",
    "PoolBookingVersion",
    "PoolCapacityRollup",
    "PoolPolicy",
    "PoolShare",
    "Quota",
    "QuotaCharge",
    "QuotaLoad",
    "Reservation",
    "ReservationEvent",
    "ScalarClaim",
    "Series",
    "TokenLifetime",
]
