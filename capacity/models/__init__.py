"""Capacity models: what is booked."""

from .bookings import Allocation, AnyAllocation, AnyDeviceBooking, DeviceBooking, ScalarClaim
from .policy import PoolPolicy
from .quota import Quota, QuotaCharge, QuotaLoad
from .reservations import AnyReservation, Reservation, ReservationEvent
from .rollups import BookedHours, BookedHoursChange, PoolCapacityRollup
from .shares import PoolShare
from .tokens import TokenLifetime

__all__ = [
    "Allocation",
    "AnyAllocation",
    "AnyDeviceBooking",
    "AnyReservation",
    "BookedHours",
    "BookedHoursChange",
    "DeviceBooking",
    "PoolCapacityRollup",
    "PoolPolicy",
    "PoolShare",
    "Quota",
    "QuotaCharge",
    "QuotaLoad",
    "Reservation",
    "ReservationEvent",
    "ScalarClaim",
    "TokenLifetime",
]
