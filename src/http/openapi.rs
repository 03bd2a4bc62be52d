//! The OpenAPI 3 document, generated from the handlers' annotations and the
//! request and response types themselves, so it cannot drift from the code.

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

#[derive(OpenApi)]
#[openapi(
    info(title = "moments", description = "WeChat-Moments / Weibo-style social circles"),
    paths(
        super::accounts::register, super::accounts::login, super::accounts::logout,
        super::accounts::list_sessions, super::accounts::sign_out_everywhere,
        super::accounts::sign_out_session, super::accounts::change_password,
        super::accounts::delete_account,
        super::accounts::me, super::accounts::update_me,
        super::social::profile, super::social::follow, super::social::unfollow,
        super::social::block, super::social::unblock, super::social::followers,
        super::social::following, super::social::friends, super::feed::feed,
        super::notifications::list, super::notifications::unread, super::notifications::mark_read,
        super::posts::create, super::posts::get, super::posts::delete, super::posts::user_posts,
        super::comments::create, super::comments::list, super::comments::delete,
        super::likes::like_post, super::likes::unlike_post, super::likes::like_comment,
        super::likes::unlike_comment, super::likes::list,
        super::admin::list, super::admin::upsert, super::admin::delete, super::admin::import,
        super::admin::rebuild_live, super::admin::check_live,
    ),
    components(schemas(
        crate::service::views::LikeView, crate::service::device_names::DeviceModelView,
        crate::service::notifications::NotificationView,
    )),
    modifiers(&BearerAuth)
)]
pub struct ApiDoc;

pub fn document() -> String {
    ApiDoc::openapi()
        .to_pretty_json()
        .unwrap_or_else(|_| "{}".to_string())
}
