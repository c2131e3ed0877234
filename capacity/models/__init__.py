"""Capacity models: what is booked."""

from .bookings import Allocation, AnyAllocation, AnyDeviceBooking, DeviceBooking, ScalarClaim
from .maintenance import MaintenanceWindow, MaintenanceWindowNode
from .policy import PoolPolicy, PoolRule
from .quota import Quota, QuotaCharge, QuotaLoad
from .reservations import AnyReservation, Reservation, ReservationEvent
from .rollups import PoolCapacityRollup
from .series import Series
from .shares import PoolShare
from .versions import PoolBookingVersion

__all__ = [
    "Allocation",
    "AnyAllocation",
    "AnyDeviceBooking",
    "AnyReservation",
    "DeviceBooking",
    "MaintenanceWindow",
    "MaintenanceWindowNode",
    "PoolBookingVersion",
    "PoolCapacityRollup",
    "PoolPolicy",
    "PoolRule",
    "PoolShare",
    "Quota",
    "QuotaCharge",
    "QuotaLoad",
    "Reservation",
    "ReservationEvent",
    "ScalarClaim",
    "Series",
]
