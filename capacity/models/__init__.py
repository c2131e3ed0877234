"""Capacity models: what is booked."""

from .bookings import Allocation, AnyAllocation, AnyDeviceBooking, DeviceBooking, ScalarClaim
from .maintenance import MaintenanceWindow, MaintenanceWindowNode
from .quota import Quota, QuotaCharge, QuotaLoad
from .reservations import AnyReservation, Reservation, ReservationEvent
from .rollups import PoolCapacityRollup
from .rules import PoolRule
from .series import Series
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
    "PoolRule",
    "Quota",
    "QuotaCharge",
    "QuotaLoad",
    "Reservation",
    "ReservationEvent",
    "ScalarClaim",
    "Series",
]
