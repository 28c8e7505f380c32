"""clinic-portal-api harness for --verify: the SPEC's models, schemas and helpers.

`namespace(state)` returns the names a case's handler may use, bound to one request:
`get_db` yields the request's session, `get_current_user` the user `as_user` of the
parameter set, `UPLOAD_ROOT` a folder inside the request's sandbox.
"""

import hashlib
import os
import uuid
from datetime import date, datetime, time, timedelta, timezone
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlparse, urlsplit

from fastapi import (
    Body,
    Depends,
    File,
    Form,
    HTTPException,
    Query,
    Request,
    Response,
    UploadFile,
)
from fastapi.responses import JSONResponse, RedirectResponse
from fastapi.security import OAuth2PasswordRequestForm
from pydantic import BaseModel, ConfigDict, EmailStr, Field
from sqlalchemy import and_, delete, exists, func, or_, select, text, update
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column


class Base(DeclarativeBase):
    pass


def _now() -> Any:
    return mapped_column(server_default=func.now())


class Clinic(Base):
    __tablename__ = "clinics"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str]


class User(Base):
    __tablename__ = "users"
    id: Mapped[int] = mapped_column(primary_key=True)
    clinic_id: Mapped[int]
    email: Mapped[str]
    full_name: Mapped[str]
    role: Mapped[str]
    password_hash: Mapped[str]
    mfa_secret: Mapped[str | None]
    is_active: Mapped[bool] = mapped_column(server_default="true")
    created_at: Mapped[datetime] = _now()


class Patient(Base):
    __tablename__ = "patients"
    id: Mapped[int] = mapped_column(primary_key=True)
    clinic_id: Mapped[int]
    mrn: Mapped[str]
    full_name: Mapped[str]
    date_of_birth: Mapped[date]
    email: Mapped[str | None]
    phone: Mapped[str | None]
    ssn: Mapped[str | None]
    primary_doctor_id: Mapped[int | None]
    created_at: Mapped[datetime] = _now()
    deleted_at: Mapped[datetime | None]


class Appointment(Base):
    __tablename__ = "appointments"
    id: Mapped[int] = mapped_column(primary_key=True)
    clinic_id: Mapped[int]
    patient_id: Mapped[int]
    doctor_id: Mapped[int]
    starts_at: Mapped[datetime]
    ends_at: Mapped[datetime]
    reason: Mapped[str | None]
    status: Mapped[str]
    checked_in_at: Mapped[datetime | None]
    created_by: Mapped[int]
    created_at: Mapped[datetime] = _now()
    deleted_at: Mapped[datetime | None]


class Prescription(Base):
    __tablename__ = "prescriptions"
    id: Mapped[int] = mapped_column(primary_key=True)
    clinic_id: Mapped[int]
    patient_id: Mapped[int]
    drug: Mapped[str]
    dosage: Mapped[str]
    instructions: Mapped[str | None]
    status: Mapped[str]
    prescribed_by: Mapped[int]
    signed_by: Mapped[int | None]
    signed_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = _now()


class LabResult(Base):
    __tablename__ = "lab_results"
    id: Mapped[int] = mapped_column(primary_key=True)
    clinic_id: Mapped[int]
    patient_id: Mapped[int]
    ordered_by: Mapped[int]
    test_code: Mapped[str]
    value: Mapped[str]
    unit: Mapped[str | None]
    flag: Mapped[str | None]
    release_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = _now()


class Invoice(Base):
    __tablename__ = "invoices"
    id: Mapped[int] = mapped_column(primary_key=True)
    clinic_id: Mapped[int]
    patient_id: Mapped[int]
    amount_cents: Mapped[int]
    status: Mapped[str]
    issued_at: Mapped[datetime | None]
    due_date: Mapped[date | None]
    paid_at: Mapped[datetime | None]
    created_by: Mapped[int]
    created_at: Mapped[datetime] = _now()
    deleted_at: Mapped[datetime | None]


class Upload(Base):
    __tablename__ = "uploads"
    id: Mapped[int] = mapped_column(primary_key=True)
    clinic_id: Mapped[int]
    patient_id: Mapped[int]
    uploaded_by: Mapped[int]
    filename: Mapped[str]
    storage_key: Mapped[str]
    content_type: Mapped[str]
    size_bytes: Mapped[int]
    created_at: Mapped[datetime] = _now()
    deleted_at: Mapped[datetime | None]


class PasswordResetToken(Base):
    __tablename__ = "password_reset_tokens"
    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int]
    token_hash: Mapped[str]
    expires_at: Mapped[datetime]
    used_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = _now()


class _Out(BaseModel):
    model_config = ConfigDict(from_attributes=True)


class PatientOut(_Out):
    id: int
    mrn: str
    full_name: str
    date_of_birth: date
    email: str | None
    phone: str | None
    primary_doctor_id: int | None
    created_at: datetime


class AppointmentOut(_Out):
    id: int
    patient_id: int
    doctor_id: int
    starts_at: datetime
    ends_at: datetime
    status: str
    reason: str | None


class PrescriptionCreate(BaseModel):
    drug: str
    dosage: str
    instructions: str | None = None


class PrescriptionOut(_Out):
    id: int
    patient_id: int
    drug: str
    dosage: str
    instructions: str | None
    status: str
    prescribed_by: int
    signed_by: int | None
    signed_at: datetime | None
    created_at: datetime


class LabResultOut(_Out):
    id: int
    patient_id: int
    test_code: str
    value: str
    unit: str | None
    flag: str | None
    release_at: datetime | None
    created_at: datetime


class InvoiceOut(_Out):
    id: int
    patient_id: int
    amount_cents: int
    status: str
    issued_at: datetime | None
    due_date: date | None
    paid_at: datetime | None


class InvoiceStatusTotal(_Out):
    status: str
    count: int
    total_cents: int


class InvoiceSummaryOut(_Out):
    by_status: list[InvoiceStatusTotal]
    overdue_count: int


class UserOut(_Out):
    id: int
    email: str
    full_name: str
    role: str
    is_active: bool


class UserUpdate(BaseModel):
    email: EmailStr | None = None
    full_name: str | None = None
    role: Literal["doctor", "nurse", "admin", "billing"] | None = None
    is_active: bool | None = None


class UploadOut(_Out):
    id: int
    patient_id: int
    filename: str
    content_type: str
    size_bytes: int
    uploaded_by: int
    created_at: datetime


class ResetConfirm(BaseModel):
    token: str
    new_password: str = Field(min_length=12)


ALLOWED_REDIRECT_HOSTS = {"portal.clinicportal.com", "app.clinicportal.com"}
# The SPEC's limit is 10 MiB; verify uses 1 KiB so that a file over the limit fits on a
# parameter line (`upload-file.md`), which exercises the size guard of rule 14.
MAX_UPLOAD_BYTES = 1024
ALLOWED_UPLOAD_TYPES = {"application/pdf", "image/png", "image/jpeg"}


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def hash_password(pw: str) -> str:
    return "PWHASH" + hashlib.sha256(pw.encode()).hexdigest()


def namespace(state: Any) -> dict[str, Any]:
    """Every name a handler of this app may use, bound to the request described by `state`."""

    def get_db() -> Session:
        session: Session = state.session
        return session

    def get_current_user() -> User:
        user: User | None = None
        if state.user_id is not None:
            user = state.session.get(User, state.user_id)
        if user is None or not user.is_active:
            raise HTTPException(401, "Not authenticated")
        return user

    def require_roles(*roles: str) -> Any:
        def dependency(current: User = Depends(get_current_user)) -> User:
            if current.role not in roles:
                raise HTTPException(403, "Forbidden")
            return current

        return dependency

    def authenticate(db: Session, email: str, password: str) -> User | None:
        return db.scalar(
            select(User).where(
                User.email == email,
                User.password_hash == hash_password(password),
                User.is_active.is_(True),
            )
        )

    def start_session(response: Response, user: User) -> None:
        response.set_cookie("session", f"session-of-{user.id}", httponly=True)

    names = {k: v for k, v in globals().items() if not k.startswith("__")}
    names.update(
        get_db=get_db,
        get_current_user=get_current_user,
        require_roles=require_roles,
        authenticate=authenticate,
        start_session=start_session,
        UPLOAD_ROOT=state.upload_root,
        datetime=datetime,
        date=date,
        time=time,
        timedelta=timedelta,
        timezone=timezone,
        uuid=uuid,
        os=os,
        Path=Path,
        urlparse=urlparse,
        urlsplit=urlsplit,
        Any=Any,
        Literal=Literal,
        Body=Body,
        File=File,
        Form=Form,
        Query=Query,
        Request=Request,
        Response=Response,
        UploadFile=UploadFile,
        JSONResponse=JSONResponse,
        RedirectResponse=RedirectResponse,
        OAuth2PasswordRequestForm=OAuth2PasswordRequestForm,
        and_=and_,
        delete=delete,
        exists=exists,
        func=func,
        or_=or_,
        select=select,
        text=text,
        update=update,
    )
    return names
