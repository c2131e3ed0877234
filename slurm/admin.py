"""The bridge's rows in the admin: which pools are bridged, each tenant's account, what came from Slurm."""

from django.contrib import admin

from .models import BridgedPool, ImportedReservation, SlurmAccount


class SlurmAccountInline(admin.TabularInline):
    model = SlurmAccount
    extra = 0


@admin.register(BridgedPool)
class BridgedPoolAdmin(admin.ModelAdmin):
    list_display = ["pool", "enabled", "accounts_required", "last_pass_at", "last_ok_at"]
    readonly_fields = ["last_pass_at", "last_ok_at", "problems"]
    inlines = [SlurmAccountInline]


@admin.register(ImportedReservation)
class ImportedReservationAdmin(admin.ModelAdmin):
    list_display = ["name", "window", "starts_at", "ends_at"]
    readonly_fields = ["name", "window", "starts_at", "ends_at", "nodes"]
