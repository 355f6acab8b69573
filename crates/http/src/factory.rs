//! What an assembled actix application of the service is, named once: the REST API, the pages
//! and the worker's whole application are each an `App` over such a factory.

use actix_web::body::BoxBody;
use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};

/// An actix service factory answering requests with boxed bodies and actix errors, built with
/// no configuration: what `App::new()` and its `.service(..)`, `.wrap(..)` chains keep being.
pub trait AppFactory:
    ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<BoxBody>,
        Error = actix_web::Error,
        InitError = (),
    >
{
}

impl<T> AppFactory for T where
    T: ServiceFactory<
            ServiceRequest,
            Config = (),
            Response = ServiceResponse<BoxBody>,
            Error = actix_web::Error,
            InitError = (),
        >
{
}
