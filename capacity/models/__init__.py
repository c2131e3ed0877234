"""Capacity models: what is booked."""

from .bookings import Allocation, DeviceBooking
from .quota import Quota, QuotaUsage
from .reservations import Reservation
from .rollups import PoolCapacityRollup

__all__ = ["Allocation", "DeviceBooking", "PoolCapacityRollup", "Quota", "QuotaUsage", "Reservation"]
